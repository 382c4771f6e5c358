"""Uploads for the tests, run with the moto venv's Python (boto3 comes with moto[server]).

Reads one JSON document on stdin: {"endpoint", "bucket", "create": bool, "ops": [...]}, each op
one of {"put": key, "path": file} | {"put": key, "text": str} |
{"multipart": key, "part_bytes": n, "parts": n, "fill": str} (a multipart upload, completed) |
{"unfinished_multipart": key} (one part uploaded, never completed) |
{"copy_tree": dir, "prefix": key prefix} (every file of dir, by its relative path) |
{"bulk": [[key, text], ...]} (many small objects, 16 at a time).
"""
import json
import os
import sys

import boto3
from botocore.config import Config

spec = json.load(sys.stdin)
s3 = boto3.client(
    "s3",
    endpoint_url=spec["endpoint"],
    region_name="us-east-1",
    aws_access_key_id=os.environ.get("AWS_ACCESS_KEY_ID", "test"),
    aws_secret_access_key=os.environ.get("AWS_SECRET_ACCESS_KEY", "test"),
    config=Config(s3={"addressing_style": "path"}, max_pool_connections=32),
)
bucket = spec["bucket"]
if spec.get("create"):
    s3.create_bucket(Bucket=bucket)

for op in spec["ops"]:
    if "put" in op:
        body = open(op["path"], "rb").read() if "path" in op else op["text"].encode()
        s3.put_object(Bucket=bucket, Key=op["put"], Body=body)
    elif "multipart" in op:
        key = op["multipart"]
        upload = s3.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
        parts = []
        for number in range(1, op["parts"] + 1):
            body = (op["fill"].encode() * (op["part_bytes"] // len(op["fill"]) + 1))[: op["part_bytes"]]
            if number == op["parts"] and "last" in op:
                body = body[: op["part_bytes"] - len(op["last"])] + op["last"].encode()
            etag = s3.upload_part(Bucket=bucket, Key=key, UploadId=upload, PartNumber=number, Body=body)["ETag"]
            parts.append({"ETag": etag, "PartNumber": number})
        s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=upload, MultipartUpload={"Parts": parts})
    elif "unfinished_multipart" in op:
        key = op["unfinished_multipart"]
        upload = s3.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
        s3.upload_part(Bucket=bucket, Key=key, UploadId=upload, PartNumber=1, Body=b"x" * 5 * 1024 * 1024)
    elif "copy_tree" in op:
        root = op["copy_tree"]
        for folder, _, files in os.walk(root):
            for name in files:
                path = os.path.join(folder, name)
                key = op["prefix"] + os.path.relpath(path, root)
                s3.put_object(Bucket=bucket, Key=key, Body=open(path, "rb").read())
    elif "bulk" in op:
        from concurrent.futures import ThreadPoolExecutor

        def put(item):
            s3.put_object(Bucket=bucket, Key=item[0], Body=item[1].encode())

        with ThreadPoolExecutor(16) as pool:
            list(pool.map(put, op["bulk"]))
    else:
        sys.exit(f"unknown op: {op}")
