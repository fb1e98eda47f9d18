"""Example numpy-only trainer for the local Vertex AI training emulator."""
