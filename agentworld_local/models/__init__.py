"""Model files: GGUF checks and identity (registry and downloads come later)."""
