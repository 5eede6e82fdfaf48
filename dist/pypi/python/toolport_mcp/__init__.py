"""The toolport binary, packaged for PyPI: see `toolport_mcp.__main__`."""
