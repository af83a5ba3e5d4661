package main

func main() {
	x := 1
	y = x + undefinedName
}
