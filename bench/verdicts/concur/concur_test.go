package concur

import "testing"

func TestWorkerPool(t *testing.T) {
	if got := workerPool(30); got != 8555 {
		t.Fatalf("workerPool %d", got)
	}
}

func TestOnce(t *testing.T) {
	if got := onceInit(20); got != 4*190 {
		t.Fatalf("onceInit %d", got)
	}
}

func TestAtomics(t *testing.T) {
	hits.Store(0)
	if got := atomics(100); got != 300 {
		t.Fatalf("atomics %d", got)
	}
}

func TestCancelled(t *testing.T) {
	if got := cancelled(50); got < 50 {
		t.Fatalf("cancelled %d", got)
	}
}

func TestRWStore(t *testing.T) {
	if got := rwStore(60); got != 1770 {
		t.Fatalf("rwStore %d", got)
	}
}

func TestPipeline(t *testing.T) {
	if got := pipeline(40); got != 820 {
		t.Fatalf("pipeline %d", got)
	}
}

func TestWakeup(t *testing.T) {
	if got := wakeup(10); got != 10 {
		t.Fatalf("woke %d of 10", got)
	}
}
