"""What a job may be: the spec models, the hardware catalog, images, and validation."""

__all__: list[str] = []
