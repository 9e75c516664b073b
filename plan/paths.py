"""Where the project is, and where the deploying machine keeps files it generates (ignored by git)."""

from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
BUNDLE_DIR = PROJECT_ROOT / ".gpufleet" / "bundles"
