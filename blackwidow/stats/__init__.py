"""`blackwidow stats`: count, average per day and mode over harvested revisions, and a plot."""
