// A streaming request cut off inside a message frame is malformed: KeepAlive, Observe and health Watch
// answer INVALID_ARGUMENT saying where the frame was cut, over gRPC and gRPC-Web. Before, a KeepAlive
// whose only bytes were a frame header announcing a payload, then the end of the body, was answered OK.
import http2 from "node:http2";
import { expect } from "chai";
import { Code } from "@connectrpc/connect";
import { toBinary, create } from "@bufbuild/protobuf";
import { KeepAliveRequestSchema } from "../../gen/ts/fencekeeper/v1/lease_pb.js";
import { useServer } from "../harness/suite.js";

interface Answer {
  status?: number;
  message: string;
}

/** POSTs body to path over HTTP/2 and reads grpc-status from the headers, the trailers or a gRPC-Web trailer frame. */
async function post(url: string, path: string, body: Buffer, contentType: string): Promise<Answer> {
  const session = http2.connect(url);
  try {
    const stream = session.request({ ":method": "POST", ":path": path, "content-type": contentType, te: "trailers" });
    let fields: Record<string, unknown> = {};
    const data: Buffer[] = [];
    stream.on("response", (h) => (fields = { ...fields, ...h }));
    stream.on("trailers", (t) => (fields = { ...fields, ...t }));
    stream.on("data", (d: Buffer) => data.push(d));
    stream.end(body);
    await new Promise<void>((resolve, reject) => {
      stream.on("close", resolve);
      stream.on("error", reject);
      setTimeout(() => reject(new Error(`no answer from ${path} within 10 s`)), 10_000).unref();
    });
    if (contentType.startsWith("application/grpc-web")) {
      // The trailer frame: flag 0x80, then "grpc-status: N\r\ngrpc-message: ...".
      const bytes = Buffer.concat(data);
      for (let at = 0; at + 5 <= bytes.length; at += 5 + bytes.readUInt32BE(at + 1)) {
        if (bytes[at] & 0x80) {
          for (const line of bytes.subarray(at + 5, at + 5 + bytes.readUInt32BE(at + 1)).toString().split("\r\n")) {
            const [k, ...v] = line.split(":");
            fields[k.trim().toLowerCase()] = v.join(":").trim();
          }
        }
      }
    }
    const status = fields["grpc-status"];
    return { status: status === undefined ? undefined : Number(status), message: decodeURIComponent(String(fields["grpc-message"] ?? "")) };
  } finally {
    session.close();
  }
}

function frame(payload: Buffer): Buffer {
  const header = Buffer.alloc(5);
  header.writeUInt32BE(payload.length, 1);
  return Buffer.concat([header, payload]);
}

describe("a streaming request cut off inside a message frame", function () {
  this.timeout(60_000);
  const s = useServer();
  const headerOnly = Buffer.from([0, 0, 0, 0, 100]);
  const cutHeader = Buffer.from([0, 0, 0]);
  const keepAlive = frame(Buffer.from(toBinary(KeepAliveRequestSchema, create(KeepAliveRequestSchema, { leaseIds: [1n] }))));

  for (const contentType of ["application/grpc", "application/grpc-web+proto"]) {
    for (const path of ["/fencekeeper.v1.LeaseService/KeepAlive", "/fencekeeper.v1.LeaseService/Observe", "/grpc.health.v1.Health/Watch"]) {
      it(`${path} over ${contentType}: a frame header announcing 100 bytes, then the end, is INVALID_ARGUMENT`, async () => {
        const a = await post(s.server.url, path, headerOnly, contentType);
        expect(a.status, a.message).to.equal(Code.InvalidArgument);
        expect(a.message).to.match(/ended inside message frame 1: its header announced 100 bytes, 0 arrived/);
      });
      it(`${path} over ${contentType}: 3 bytes of a frame header, then the end, is INVALID_ARGUMENT`, async () => {
        const a = await post(s.server.url, path, cutHeader, contentType);
        expect(a.status, a.message).to.equal(Code.InvalidArgument);
        expect(a.message).to.match(/inside the header of message frame 1 \(3 of 5 bytes\)/);
      });
    }
  }

  it("a KeepAlive with one whole frame, then a cut one, is INVALID_ARGUMENT naming the second frame", async () => {
    const a = await post(s.server.url, "/fencekeeper.v1.LeaseService/KeepAlive", Buffer.concat([keepAlive, headerOnly]), "application/grpc");
    expect(a.status, a.message).to.equal(Code.InvalidArgument);
    expect(a.message).to.match(/message frame 2/);
  });

  it("a KeepAlive whose frames are whole ends as it did (its lease unknown: NOT_FOUND in the answer, OK at the end)", async () => {
    const a = await post(s.server.url, "/fencekeeper.v1.LeaseService/KeepAlive", keepAlive, "application/grpc");
    expect(a.status, a.message).to.equal(0);
  });
});
