#!/usr/bin/env python3
"""A ChordStore client written against proto/ only, with Python's grpcio: it generates
its stubs from the .proto files at run time (grpc_tools.protoc), then calls a server's
gRPC endpoint (`chordstore serve --grpc-port`). The Swift test GRPCEndpointTests runs it
and checks what it prints: one JSON object of what each call returned.

Usage: grpc_client.py --target HOST:PORT --token-file FILE --proto DIR [--ca FILE]
  --ca  speak TLS, trusting this certificate authority (PEM)
"""
import argparse
import json
import os
import shutil
import sys
import tempfile
import threading

import grpc
from grpc_tools import protoc


def generate(proto_dir, out):
    files = []
    for root, _, names in os.walk(os.path.join(proto_dir, "chordstore")):
        files += [os.path.join(root, n) for n in names if n.endswith(".proto")]
    include = os.path.join(os.path.dirname(protoc.__file__), "_proto")
    status = protoc.main(["protoc", f"-I{proto_dir}", f"-I{include}", f"--python_out={out}", f"--grpc_python_out={out}"] + files)
    # The health service's path (grpc/health/v1) would make a module `grpc`, grpcio's own
    # name: it is compiled from a copy at the top level instead.
    # google.rpc.Status and ErrorInfo (the details of an error's grpc-status-details-bin),
    # compiled before anything imports `google`, whose namespace path is then fixed.
    rpc = [os.path.join(proto_dir, "google", "rpc", n) for n in ("status.proto", "error_details.proto")]
    status = status or protoc.main(["protoc", f"-I{proto_dir}", f"-I{include}", f"--python_out={out}"] + rpc)
    for name in ("health", "reflection"):
        shutil.copy(os.path.join(proto_dir, "grpc", name, "v1", f"{name}.proto"), out)
        status |= protoc.main(["protoc", f"-I{out}", f"--python_out={out}", f"--grpc_python_out={out}", os.path.join(out, f"{name}.proto")])
    if status != 0:
        sys.exit(f"protoc failed ({status})")
    sys.path.insert(0, out)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--target", required=True)
    parser.add_argument("--token-file", required=True)
    parser.add_argument("--proto", required=True)
    parser.add_argument("--ca")
    args = parser.parse_args()
    out = tempfile.mkdtemp(prefix="chordstore-grpc-py-")
    generate(args.proto, out)
    from chordstore.v1 import rpc_pb2, rpc_pb2_grpc
    import health_pb2
    import health_pb2_grpc
    import reflection_pb2
    import reflection_pb2_grpc
    from google.protobuf import descriptor_pb2

    token = open(args.token_file).read().strip()
    metadata = [("authorization", f"Bearer {token}"), ("session", "python")]
    if args.ca:
        channel = grpc.secure_channel(args.target, grpc.ssl_channel_credentials(open(args.ca, "rb").read()))
    else:
        channel = grpc.insecure_channel(args.target)
    stub = rpc_pb2_grpc.ChordStoreStub(channel)
    result = {}

    # Health, without a credential.
    health = health_pb2_grpc.HealthStub(channel)
    result["health"] = health_pb2.HealthCheckResponse.ServingStatus.Name(
        health.Check(health_pb2.HealthCheckRequest(service=""), timeout=10).status)

    # A subscription from the start, read on another thread while the writes go on.
    events = []
    subscription = stub.Subscribe(rpc_pb2.SubscribeRequest(from_sequence=0), metadata=metadata, timeout=30)
    got_four = threading.Event()

    def read():
        try:
            for envelope in subscription:
                events.append([envelope.sequence, envelope.WhichOneof("event") or ""])
                if len(events) >= 4:
                    got_four.set()
        except grpc.RpcError as error:
            result["subscription_end"] = error.code().name

    reader = threading.Thread(target=read)
    reader.start()

    added = stub.AddChordset(rpc_pb2.AddChordsetRequest(title="from python"), metadata=metadata, timeout=10)
    chordset_id = added.event.chordset_added.chordset.id
    result["added_sequence"] = added.event.sequence
    result["added_chords"] = len(added.event.chordset_added.chordset.chords)
    stub.AddChordset(rpc_pb2.AddChordsetRequest(title="second"), metadata=metadata, timeout=10)
    stub.RenameChordset(rpc_pb2.RenameChordsetRequest(chordset_id=chordset_id, title="renamed in python"),
                        metadata=metadata, timeout=10)
    listed = stub.ListChordsets(rpc_pb2.ListChordsetsRequest(), metadata=metadata, timeout=10)
    result["titles_after_rename"] = [c.title for c in listed.chordsets]
    undone = stub.Undo(rpc_pb2.UndoRequest(), metadata=metadata, timeout=10)
    result["undo_sequence"] = undone.event.sequence
    listed = stub.ListChordsets(rpc_pb2.ListChordsetsRequest(), metadata=metadata, timeout=10)
    result["titles_after_undo"] = [c.title for c in listed.chordsets]

    result["subscription_got_four"] = got_four.wait(20)
    subscription.cancel()
    reader.join(10)
    result["subscribed"] = events[:4]

    # Read your writes with min-sequence, and a wait its deadline ends.
    got = stub.GetChordset(rpc_pb2.GetChordsetRequest(chordset_id=chordset_id),
                           metadata=metadata + [("min-sequence", str(undone.event.sequence))], timeout=10)
    result["read_your_writes"] = got.title
    try:
        stub.GetProfile(rpc_pb2.GetProfileRequest(), metadata=metadata + [("min-sequence", "1000000")], timeout=0.3)
        result["deadline"] = "OK"
    except grpc.RpcError as error:
        result["deadline"] = error.code().name

    # Refusals carry the framed protocol's codes.
    def code_of(call):
        try:
            call()
            return "OK"
        except grpc.RpcError as error:
            return error.code().name

    result["no_token"] = code_of(lambda: stub.ListChordsets(rpc_pb2.ListChordsetsRequest(), timeout=10))
    result["wrong_token"] = code_of(lambda: stub.ListChordsets(
        rpc_pb2.ListChordsetsRequest(), metadata=[("authorization", "Bearer cs_nope_nope")], timeout=10))
    result["unknown_store"] = code_of(lambda: stub.ListChordsets(
        rpc_pb2.ListChordsetsRequest(), metadata=metadata + [("store", "no-such-store")], timeout=10))
    result["bad_title"] = code_of(lambda: stub.AddChordset(
        rpc_pb2.AddChordsetRequest(title="x" * 5000), metadata=metadata, timeout=10))
    result["replicate"] = code_of(lambda: list(stub.Replicate(rpc_pb2.ReplicateRequest(), metadata=metadata, timeout=10)))

    # Server reflection, as grpcurl uses it, without a credential: the services, then
    # the file that declares the service, with its imports, then an unknown symbol.
    reflection = reflection_pb2_grpc.ServerReflectionStub(channel)
    asked = [reflection_pb2.ServerReflectionRequest(list_services=""),
             reflection_pb2.ServerReflectionRequest(file_containing_symbol="chordstore.v1.ChordStore"),
             reflection_pb2.ServerReflectionRequest(file_containing_symbol="chordstore.v1.NoSuchThing")]
    answers = list(reflection.ServerReflectionInfo(iter(asked), timeout=10))
    result["reflection_services"] = [service.name for service in answers[0].list_services_response.service]
    files = [descriptor_pb2.FileDescriptorProto.FromString(b) for b in answers[1].file_descriptor_response.file_descriptor_proto]
    result["reflection_files"] = [f.name for f in files]
    result["reflection_methods"] = [m.name for f in files for svc in f.service if svc.name == "ChordStore" for m in svc.method][:3]
    result["reflection_unknown"] = answers[2].error_response.error_code
    print(json.dumps(result, sort_keys=True))


if __name__ == "__main__":
    main()
