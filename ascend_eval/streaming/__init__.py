"""Runs of any size in one process, and the pieces other executors share: samples read as a stream,
scores written as they come, aggregates kept online."""
