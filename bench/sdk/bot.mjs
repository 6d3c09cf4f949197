// The TypeScript Chat SDK's equivalent of echo-bot's echo handler, for
// `cargo xtask bench reply`'s side-by-side run: the same signed Slack load,
// memory state, handlers run after the answer (waitUntil), drop on overlap;
// a mention subscribes its thread and posts one reply, a message in a
// subscribed thread posts one reply. Serves the webhook on BIND's port with
// Node's http server, and GET /healthz.
import http from "node:http";
import { Chat } from "chat";
import { createSlackAdapter } from "@chat-adapter/slack";
import { createMemoryState } from "@chat-adapter/state-memory";

const [host, port] = (process.env.BIND ?? "127.0.0.1:3000").split(":");

const bot = new Chat({
  userName: "bench",
  logger: "silent",
  concurrency: "drop",
  adapters: {
    slack: createSlackAdapter({
      botToken: process.env.SLACK_BOT_TOKEN,
      signingSecret: process.env.SLACK_SIGNING_SECRET,
      botUserId: process.env.SLACK_BOT_USER_ID,
      apiUrl: process.env.SLACK_API_URL.replace(/\/?$/, "/"),
    }),
  },
  state: createMemoryState(),
});

bot.onNewMention(async (thread, message) => {
  await thread.subscribe();
  await thread.post(`echo: ${message.text}`);
});

bot.onSubscribedMessage(async (thread, message) => {
  await thread.post(`echo: ${message.text}`);
});

const server = http.createServer((req, res) => {
  if (req.method === "GET" && req.url === "/healthz") {
    res.writeHead(200).end("ok");
    return;
  }
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", async () => {
    try {
      const request = new Request(`http://${host}:${port}${req.url}`, {
        method: req.method,
        headers: req.headers,
        body: Buffer.concat(chunks),
      });
      const response = await bot.webhooks.slack(request, {
        waitUntil: (task) => task.catch(() => {}),
      });
      res.writeHead(response.status, Object.fromEntries(response.headers));
      res.end(Buffer.from(await response.arrayBuffer()));
    } catch (e) {
      res.writeHead(500).end(String(e));
    }
  });
});
server.keepAliveTimeout = 65_000;
server.listen(Number(port), host);
process.on("SIGTERM", () => server.close(() => process.exit(0)));
