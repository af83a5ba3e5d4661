package fixed2

import "testing"

func TestWithdraw(t *testing.T) {
	if a := RunWithdraw(5, 6); a.bal != 0 || a.paid != 5 {
		t.Fatalf("balance %d, paid %d: want 0, 5", a.bal, a.paid)
	}
}

func TestConns(t *testing.T) {
	if d := RunConns(); d != 1 {
		t.Fatalf("dialed %d connections for one key", d)
	}
}

func TestLookup(t *testing.T) {
	if got := RunLookup(); got != [2]string{"n3", "n3"} {
		t.Fatalf("lookups %q", got)
	}
}

func recSum(id int) int { return 7*id + 15 }

func TestHeld(t *testing.T) {
	if got := heldAsPointer(500); got != recSum(500) {
		t.Fatalf("sum %d", got)
	}
}

func TestPastEnd(t *testing.T) {
	if got := pastEnd(500); got != 8*500+28 {
		t.Fatalf("sum %d", got)
	}
}

func TestHandles(t *testing.T) {
	if got := handleTable(500); got != recSum(500)+recSum(501)+recSum(502)+recSum(503) {
		t.Fatalf("sum %d", got)
	}
}

func TestReadFile(t *testing.T) {
	if got := readFile(500); got != 50*500 {
		t.Fatalf("read %d", got)
	}
}

func TestDeadline(t *testing.T) {
	if got := deadline(300); got != 300*299/2 {
		t.Fatalf("sum %d", got)
	}
}
