module example.com/ringmod

go 1.22
