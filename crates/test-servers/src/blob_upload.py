"""Uploads for the tests to the Azure and Cloud Storage emulators, run with the test venv's Python
(azure-storage-blob for Azurite; the Cloud Storage emulator's JSON upload API through urllib).

Reads one JSON document on stdin: {"kind": "azure" | "gcs", "connection": str (azure),
"endpoint": str (gcs), "container": str, "ops": [...]}, each op one of
{"put": key, "text": str} | {"copy_tree": dir, "prefix": key prefix} (every file of dir, by its
relative path). The container (bucket) is created first when it does not exist.
"""
import json
import os
import sys
import urllib.request

spec = json.load(sys.stdin)


def objects():
    for op in spec["ops"]:
        if "put" in op:
            yield op["put"], op["text"].encode()
        elif "copy_tree" in op:
            root = op["copy_tree"]
            for folder, _, files in os.walk(root):
                for name in sorted(files):
                    path = os.path.join(folder, name)
                    with open(path, "rb") as body:
                        yield op["prefix"] + os.path.relpath(path, root), body.read()
        else:
            sys.exit(f"unknown op: {op}")


if spec["kind"] == "azure":
    from azure.core.exceptions import ResourceExistsError
    from azure.storage.blob import BlobServiceClient

    container = BlobServiceClient.from_connection_string(spec["connection"]).get_container_client(spec["container"])
    try:
        container.create_container()
    except ResourceExistsError:
        pass
    for key, body in objects():
        container.upload_blob(key, body, overwrite=True)
elif spec["kind"] == "gcs":
    endpoint, bucket = spec["endpoint"], spec["container"]
    request = urllib.request.Request(
        f"{endpoint}/storage/v1/b", data=json.dumps({"name": bucket}).encode(), method="POST",
        headers={"Content-Type": "application/json"},
    )
    try:
        urllib.request.urlopen(request).read()
    except urllib.error.HTTPError as error:
        if error.code != 409:
            raise
    # A multipart upload (metadata, then the bytes): the emulator drops a media upload of no bytes.
    boundary = "zibby-studio-test-boundary"
    for key, body in objects():
        data = (
            f"--{boundary}\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n"
            f"{json.dumps({'name': key})}\r\n--{boundary}\r\nContent-Type: application/octet-stream\r\n\r\n"
        ).encode() + body + f"\r\n--{boundary}--\r\n".encode()
        url = f"{endpoint}/upload/storage/v1/b/{bucket}/o?uploadType=multipart"
        headers = {"Content-Type": f"multipart/related; boundary={boundary}"}
        urllib.request.urlopen(urllib.request.Request(url, data=data, method="POST", headers=headers)).read()
else:
    sys.exit(f"unknown kind: {spec['kind']}")
