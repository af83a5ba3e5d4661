module example.com/pctsweep

go 1.22
