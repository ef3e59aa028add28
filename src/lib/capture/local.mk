# capture stage
