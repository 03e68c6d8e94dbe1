"""stalldiag.pyobjects.layouts: the per-version offsets, and the version from a process's maps."""
import os
import sys

import pytest

from stalldiag.pyobjects import NotRead
from stalldiag.pyobjects.layouts import SUPPORTED, layout_for, version_from_maps, version_from_path


def test_every_supported_version_has_a_layout():
    for version in SUPPORTED:
        assert layout_for(version).version == version
    assert layout_for([3, 12]).version == (3, 12)


@pytest.mark.parametrize("version", [(3, 7), (3, 14), (2, 7), "3.11", None, (3,)])
def test_other_versions_are_not_read(version):
    got = layout_for(version)
    assert isinstance(got, NotRead) and not got


def test_offsets_from_the_headers():
    # PyHeapTypeObject: sizeof(PyTypeObject) is 416 on 3.8 (tp_print came back), 408 on
    # 3.9-3.11, 416 on 3.12+ (tp_watched); PyAsyncMethods gained am_send in 3.10
    assert [layout_for(v).ht_qualname for v in SUPPORTED] == [864, 856, 864, 864, 872, 872]
    assert [layout_for(v).ht_cached_keys for v in SUPPORTED] == [872, 864, 872, 872, 880, 880]
    # PyASCIIObject lost wstr in 3.12
    assert [layout_for(v).unicode_ascii_data for v in SUPPORTED] == [48, 48, 48, 48, 40, 40]
    assert [layout_for(v).unicode_compact_data for v in SUPPORTED] == [72, 72, 72, 72, 56, 56]
    assert [layout_for(v).managed_dict for v in SUPPORTED] == ["offset"] * 3 + ["3.11", "3.12", "3.13"]
    assert [layout_for(v).long_lv_tag for v in SUPPORTED] == [False] * 4 + [True] * 2
    # FutureObj_HEAD grew cancel_msg (3.9), exception_tb (3.10), cancelled_exc (3.13)
    assert [layout_for(v).fut_state for v in SUPPORTED] == [72, 80, 88, 88, 88, 96]
    assert [layout_for(v).simplequeue_form for v in SUPPORTED] == ["list"] * 5 + ["ring"]


@pytest.mark.parametrize("path,version", [
    ("/root/.pyenv/versions/3.12.1/lib/libpython3.12.so.1.0", (3, 12)),
    ("/usr/lib/x86_64-linux-gnu/libpython3.10.so.1.0", (3, 10)),
    ("/root/.pyenv/versions/3.11.7/bin/python3.11", (3, 11)),
    ("/usr/bin/python3.8", (3, 8)),
    ("/opt/conda/bin/python3.9", (3, 9)),
    ("/usr/lib/python3.11/lib-dynload/_ssl.cpython-311-x86_64-linux-gnu.so", None),
    ("/usr/lib/python3/dist-packages/foo.so", None),
    ("/usr/bin/bash", None),
])
def test_version_from_path(path, version):
    assert version_from_path(path) == version


def test_a_free_threaded_build_is_not_read():
    got = version_from_path("/usr/lib/libpython3.13t.so.1.0")
    assert isinstance(got, NotRead) and "free-threaded" in got.reason


def test_version_from_maps_of_this_process():
    assert version_from_maps(os.getpid()) == sys.version_info[:2]


def test_version_from_maps_of_no_process():
    got = version_from_maps(2 ** 22 + 12345)
    assert isinstance(got, NotRead)
