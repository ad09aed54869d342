// Verifies and signs with the standardwebhooks npm package, an
// implementation of Standard Webhooks independent of ours.
// stdin: {"op": "verify"|"sign", "secret", "id", "timestamp", "body", "headers"}
import { Webhook } from "standardwebhooks";

let input = "";
for await (const chunk of process.stdin) input += chunk;
const req = JSON.parse(input);
const wh = new Webhook(req.secret);
if (req.op === "verify") {
  try {
    const payload = wh.verify(req.body, req.headers);
    console.log(JSON.stringify({ ok: true, id: payload.id }));
  } catch (e) {
    console.log(JSON.stringify({ ok: false, error: String(e) }));
  }
} else {
  const sig = wh.sign(req.id, new Date(req.timestamp * 1000), req.body);
  console.log(JSON.stringify({ signature: sig }));
}
