# deliver stage
