"""The packaged calibration prompt sets of Sink Strength (data files only)."""
