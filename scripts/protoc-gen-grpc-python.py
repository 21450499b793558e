"""protoc-gen-grpc-python: grpcio-tools' grpc_python generator as a protoc plugin, for buf.

grpcio-tools ships the generator only inside its own protoc (python -m grpc_tools.protoc), which buf
cannot run as a plugin. This plugin reads the CodeGeneratorRequest that buf sends, hands its files to
that protoc as a descriptor set, and answers with the *_pb2_grpc.py files it wrote.
scripts/install-codegen.sh runs it from the venv where grpcio-tools is installed.
"""

import pathlib
import sys
import tempfile

from google.protobuf import descriptor_pb2
from google.protobuf.compiler import plugin_pb2
from grpc_tools import protoc


def generate(request: plugin_pb2.CodeGeneratorRequest) -> plugin_pb2.CodeGeneratorResponse:
    response = plugin_pb2.CodeGeneratorResponse(
        supported_features=plugin_pb2.CodeGeneratorResponse.FEATURE_PROTO3_OPTIONAL
    )
    with tempfile.TemporaryDirectory() as tmp:
        descriptors = pathlib.Path(tmp, "request.binpb")
        descriptors.write_bytes(descriptor_pb2.FileDescriptorSet(file=request.proto_file).SerializeToString())
        out = pathlib.Path(tmp, "out")
        out.mkdir()
        args = ["grpc_tools.protoc", f"--descriptor_set_in={descriptors}", f"--grpc_python_out={out}"]
        if request.parameter:
            args.append(f"--grpc_python_opt={request.parameter}")
        if protoc.main(args + list(request.file_to_generate)) != 0:
            response.error = "grpc_tools.protoc failed (its messages are above)"
            return response
        for path in sorted(p for p in out.rglob("*") if p.is_file()):
            response.file.add(name=path.relative_to(out).as_posix(), content=path.read_text())
    return response


if __name__ == "__main__":
    request = plugin_pb2.CodeGeneratorRequest.FromString(sys.stdin.buffer.read())
    sys.stdout.buffer.write(generate(request).SerializeToString())
