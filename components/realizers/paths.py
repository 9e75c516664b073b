"""Where realizers keep files they generate on the deploying machine (ignored by git)."""

from pathlib import Path

BUNDLE_DIR = Path(__file__).resolve().parents[2] / ".gpufleet" / "bundles"
