module gpufleet.local/test-images

go 1.24
