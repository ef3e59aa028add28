# symbols stage
