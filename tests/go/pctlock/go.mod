module example.com/pctlock

go 1.22
