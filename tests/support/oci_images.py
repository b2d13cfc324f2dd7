"""The images of the real nodes (tests/images, README there): static Go binaries packed as OCI image-layout tars.

``build_images()`` builds each image's binary with ``go build`` (``CGO_ENABLED=0``) and packs it, once per content of
tests/images: the tars are cached under ``<RUNTIME_GATE_CACHE>/test-images/<hash of the sources>/``. The layout is
written here with the standard library (tarfile, hashlib, json): ``oci-layout``, ``index.json`` (its manifest carries
the ``io.containerd.image.name`` annotation ctr names the image by), the manifest, the config (entrypoint = the binary)
and one uncompressed layer with the binary at ``/``.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

from support.containerd_daemons import CACHE
from support.paths import REPO_ROOT
from support.tools import require_tool

SOURCES = REPO_ROOT / "tests" / "images"
# image directory -> image name
IMAGES = {"pause": "gpufleet.local/pause:1", "workload": "gpufleet.local/workload:1"}
PAUSE_IMAGE = IMAGES["pause"]
WORKLOAD_IMAGE = IMAGES["workload"]
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
OCI_LAYER = "application/vnd.oci.image.layer.v1.tar"


def sources_digest() -> str:
    digest = hashlib.sha256()
    for path in sorted(SOURCES.rglob("*")):
        if path.is_file():
            digest.update(str(path.relative_to(SOURCES)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def _blob(blobs: dict, data: bytes, media_type: str) -> dict:
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    blobs[digest] = data
    return {"mediaType": media_type, "digest": digest, "size": len(data)}


def _tar_member(archive, name, data: bytes, mode=0o644):
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = len(data), mode, 0
    archive.addfile(info, io.BytesIO(data))


def oci_layout_tar(name: str, binary: bytes, entrypoint: str) -> bytes:
    """An OCI image layout (as a tar) of one image ``name`` whose only file is ``binary`` at ``/<entrypoint>``."""
    layer_buffer = io.BytesIO()
    with tarfile.open(fileobj=layer_buffer, mode="w", format=tarfile.PAX_FORMAT) as layer:
        _tar_member(layer, entrypoint, binary, 0o755)
    layer_bytes = layer_buffer.getvalue()
    blobs = {}
    layer_descriptor = _blob(blobs, layer_bytes, OCI_LAYER)
    config = {"architecture": "amd64", "os": "linux",
              "config": {"Entrypoint": ["/" + entrypoint], "WorkingDir": "/"},
              "rootfs": {"type": "layers", "diff_ids": [layer_descriptor["digest"]]}}
    config_descriptor = _blob(blobs, json.dumps(config, sort_keys=True).encode(), OCI_CONFIG)
    manifest = {"schemaVersion": 2, "mediaType": OCI_MANIFEST, "config": config_descriptor, "layers": [layer_descriptor]}
    manifest_descriptor = _blob(blobs, json.dumps(manifest, sort_keys=True).encode(), OCI_MANIFEST)
    manifest_descriptor["annotations"] = {"io.containerd.image.name": name,
                                          "org.opencontainers.image.ref.name": name.rsplit(":", 1)[1]}
    manifest_descriptor["platform"] = {"architecture": "amd64", "os": "linux"}
    index = {"schemaVersion": 2, "manifests": [manifest_descriptor]}
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as archive:
        _tar_member(archive, "oci-layout", json.dumps({"imageLayoutVersion": "1.0.0"}).encode())
        _tar_member(archive, "index.json", json.dumps(index, sort_keys=True).encode())
        for digest, data in blobs.items():
            _tar_member(archive, "blobs/sha256/" + digest.split(":", 1)[1], data)
    return out.getvalue()


def build_images() -> dict:
    """image name -> path of its OCI layout tar (built once per content of tests/images)."""
    require_tool(shutil.which("go") is not None, "the `go` command is needed to build the test images (tests/images)")
    target = CACHE / "test-images" / sources_digest()
    tars = {name: target / f"{directory}.tar" for directory, name in IMAGES.items()}
    if all(path.is_file() for path in tars.values()):
        return tars
    target.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="test-images-") as workdir:
        env = dict(os.environ, CGO_ENABLED="0", GOFLAGS="-buildvcs=false", GOTOOLCHAIN="local")
        env.setdefault("GOCACHE", str(CACHE / "gocache"))
        for directory, name in IMAGES.items():
            binary = Path(workdir) / directory
            completed = subprocess.run(["go", "build", "-trimpath", "-o", str(binary), "./" + directory], cwd=SOURCES,
                                       env=env, capture_output=True, text=True, timeout=300, check=False)
            if completed.returncode != 0:
                raise RuntimeError(f"go build of tests/images/{directory} failed:\n{completed.stderr}")
            partial = tars[name].with_suffix(".partial")
            partial.write_bytes(oci_layout_tar(name, binary.read_bytes(), directory))
            os.replace(partial, tars[name])
    return tars
