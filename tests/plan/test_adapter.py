"""A node's user-data carries its cloud's node-script adapter (cloud-init/clouds/<cloud>.sh); a cloud without one
gets no user-data: rendering fails closed, naming the file to add."""

from __future__ import annotations

import pytest

from plan.bootstrap import CLOUD_INIT, adapter


def test_each_cloud_gets_its_own_adapter_file():
    for path in sorted((CLOUD_INIT / "clouds").glob("*.sh")):
        assert adapter(path.stem) == path.read_bytes()


def test_a_cloud_without_an_adapter_is_refused_naming_the_file_to_add():
    with pytest.raises(FileNotFoundError) as refused:
        adapter("nowhere")
    assert str(refused.value) == "no node-script adapter for cloud 'nowhere': add cloud-init/clouds/nowhere.sh"
