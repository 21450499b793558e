import http2 from "node:http2";
import { readFileSync } from "node:fs";
import { startEtcd } from "../harness/etcd.js";
import { startServer } from "../harness/server.js";
import { frame } from "../harness/wire.js";
const etcd = await startEtcd();
const s = await startServer({ etcd: etcd.endpoint });
const port = Number(new URL(s.url).port);
const closeWait = () => readFileSync("/proc/net/tcp", "utf8").split("\n").filter((l) => { const f = l.trim().split(/\s+/); return f[1]?.endsWith(":" + port.toString(16).toUpperCase()) && f[3] === "08"; }).length;
try {
  const session = http2.connect(s.url);
  const st = session.request({ ":method": "POST", ":path": "/fencekeeper.v1.LeaseService/KeepAlive", "content-type": "application/grpc", te: "trailers" });
  const fields: Record<string, unknown> = {};
  st.on("response", (h) => Object.assign(fields, h)); st.on("trailers", (h) => Object.assign(fields, h)); st.resume();
  st.write(frame(Buffer.from([0xff, 0xff, 0xff])));
  await new Promise((r) => setTimeout(r, 300));
  st.write(frame(Buffer.from([0x08, 0x01]))); st.write(frame(Buffer.from([0x08, 0x02]))); st.end();
  await new Promise((r) => setTimeout(r, 1000));
  console.log("status", fields["grpc-status"], fields["grpc-message"], "stream closed", st.closed);
  session.destroy();
  await new Promise((r) => setTimeout(r, 3000));
  console.log("CLOSE_WAIT on server port:", closeWait());
} finally { await s.stop(); await etcd.destroy(); }
