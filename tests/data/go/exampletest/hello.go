// Package hello is a package whose `go test -c` binary has an Example: the testing package captures the
// example's stdout through os.Pipe and reads it to end of file.
package hello

// Greeting says hello.
func Greeting(name string) string { return "hello, " + name }
