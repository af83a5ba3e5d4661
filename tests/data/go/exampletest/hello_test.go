package hello

import (
	"fmt"
	"testing"
)

func TestGreeting(t *testing.T) {
	if got := Greeting("gopher"); got != "hello, gopher" {
		t.Fatalf("Greeting = %q", got)
	}
}

func ExampleGreeting() {
	fmt.Println(Greeting("world"))
	// Output: hello, world
}
