"""Views people watch that are built from the model's answers (the file tree from a probe)."""
