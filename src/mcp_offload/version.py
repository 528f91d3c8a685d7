"""The package version: one place, imported by the server info, the CLI and the proxy's client info."""

__version__ = "0.1.0"
