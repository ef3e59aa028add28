# fetch servers and their benchmark
