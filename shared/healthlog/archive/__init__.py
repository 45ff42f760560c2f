"""Where delivery bodies are archived, byte for byte: a local folder or S3."""
