"""Write components/plugin/schema.json from the Vertex AI v1 types (``make provider-schema``)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from components.plugin._schema import SCHEMA_FILE, build_schema, render_schema


def main() -> None:
    SCHEMA_FILE.write_text(render_schema(build_schema()), encoding="utf-8")
    print(SCHEMA_FILE)


if __name__ == "__main__":
    main()
