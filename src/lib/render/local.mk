# render stage
