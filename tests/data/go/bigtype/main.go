// A type too large for a pointer bitmask in its type descriptor: Go <= 1.23 give it a GC program
// (KindGCProg), Go >= 1.24 build its mask on demand (TFlagGCMaskOnDemand). Its pointer words are
// 0..19999 and 20001. Unnamed, so the linker lists it in moduledata.typelinks.
package main

import "fmt"

var sink *struct {
	A [20000]*int
	N int
	C *int
}

func main() {
	sink = new(struct {
		A [20000]*int
		N int
		C *int
	})
	x := 7
	sink.C = &x
	fmt.Println(*sink.C)
}
