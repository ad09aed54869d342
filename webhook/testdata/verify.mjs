// Signs and verifies with the standardwebhooks npm package, an
// implementation of Standard Webhooks independent of package webhook's.
// node_test.go runs it as: STANDARDWEBHOOKS_DIR=<npm --prefix> node verify.mjs
//
// stdin:  a JSON array of requests,
//           {"op": "verify", "secret", "headers": {...}, "body"}
//           {"op": "sign", "secret", "id", "timestamp": <Unix seconds>, "body"}
// stdout: {"version": <the package's version>, "results": [...]}, a result
//         per request in order: {"ok": true, "id": <the verified body's id>}
//         or {"ok": false, "error"} for verify, {"signature"} for sign.
import { createRequire } from "node:module";
import { join } from "node:path";

const dir = process.env.STANDARDWEBHOOKS_DIR;
if (!dir) throw new Error("STANDARDWEBHOOKS_DIR is not set");
const require = createRequire(join(dir, "package.json"));
const { Webhook } = require("standardwebhooks");
const { version } = require("standardwebhooks/package.json");

let input = "";
for await (const chunk of process.stdin) input += chunk;

const results = JSON.parse(input).map((req) => {
  const wh = new Webhook(req.secret);
  switch (req.op) {
    case "verify":
      try {
        const payload = wh.verify(req.body, req.headers);
        return { ok: true, id: payload?.id ?? null };
      } catch (e) {
        return { ok: false, error: String(e) };
      }
    case "sign":
      return { signature: wh.sign(req.id, new Date(req.timestamp * 1000), req.body) };
    default:
      throw new Error(`unknown op ${req.op}`);
  }
});
process.stdout.write(JSON.stringify({ version, results }));
