"""Small, reproducible experiments with the reference learner."""
