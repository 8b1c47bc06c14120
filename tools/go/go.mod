module herdtools

go 1.19
