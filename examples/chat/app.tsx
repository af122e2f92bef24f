/**
 * A chat page for the service: the AI SDK's `useChat` with its own `DefaultChatTransport`,
 * unmodified. The token is kept in memory only (paste it again after a reload); the chat id is
 * the URL hash, so a reload seeds the conversation's messages and resumes a running answer.
 */
import { useChat } from "@ai-sdk/react";
import { DefaultChatTransport, type UIMessage } from "ai";
import { type FormEvent, useMemo, useState } from "react";
import { createRoot } from "react-dom/client";

type Session = { service: string; token: string; chatId: string; messages: UIMessage[] };

function App() {
  const [service, setService] = useState("http://localhost:8787");
  const [token, setToken] = useState("");
  const [session, setSession] = useState<Session | null>(null);
  const [error, setError] = useState("");

  async function connect(e: FormEvent) {
    e.preventDefault();
    setError("");
    try {
      const base = service.replace(/\/+$/, "");
      const chatId = location.hash.slice(1) || (await openConversation(base, token));
      location.hash = chatId;
      setSession({ service: base, token, chatId, messages: await messagesOf(base, token, chatId) });
    } catch (err) {
      setError(String(err));
    }
  }

  if (session) return <Chat key={session.chatId} session={session} />;
  return (
    <form onSubmit={connect}>
      <input id="service" value={service} onChange={(e) => setService(e.target.value)} placeholder="Service URL" />
      <input id="token" type="password" value={token} onChange={(e) => setToken(e.target.value)} placeholder="PAT" />
      <button id="connect" type="submit" disabled={!token}>
        Connect
      </button>
      {error && <p className="error">{error}</p>}
    </form>
  );
}

/** A new conversation, so the chat id is always a conversation id (the page can read and stop it). */
async function openConversation(base: string, token: string): Promise<string> {
  const res = await call(base, token, "/v1/api/conversations", {});
  return ((await res.json()) as { id: string }).id;
}

/** The conversation's messages as `UIMessage`s, to seed `useChat` after a reload. */
async function messagesOf(base: string, token: string, chatId: string): Promise<UIMessage[]> {
  const res = await call(base, token, `/v1/api/conversations/${encodeURIComponent(chatId)}`);
  const { messages } = (await res.json()) as { messages: UIMessage[] };
  return messages.map(({ id, role, parts }) => ({ id, role, parts }));
}

async function call(base: string, token: string, path: string, body?: unknown): Promise<Response> {
  const res = await fetch(base + path, {
    method: body ? "POST" : "GET",
    headers: { Authorization: `Bearer ${token}`, ...(body ? { "Content-Type": "application/json" } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  return res;
}

function Chat({ session }: { session: Session }) {
  const { service, token, chatId } = session;
  const transport = useMemo(
    () => new DefaultChatTransport({ api: `${service}/v1/api/chat`, headers: { Authorization: `Bearer ${token}` } }),
    [service, token],
  );
  // resume: true asks `${api}/${chatId}/stream` on load for a turn still running.
  const { messages, sendMessage, stop, status, error } = useChat({
    id: chatId,
    messages: session.messages,
    transport,
    resume: true,
  });
  const [input, setInput] = useState("");
  const busy = status === "submitted" || status === "streaming";

  function send(e: FormEvent) {
    e.preventDefault();
    if (!input.trim()) return;
    sendMessage({ text: input });
    setInput("");
  }

  // Closing the client's stream leaves the turn running on the server: stop that too.
  async function stopTurn() {
    await stop();
    await call(service, token, `/v1/api/conversations/${encodeURIComponent(chatId)}/stop`, {}).catch(() => {});
  }

  return (
    <main>
      <p>
        Chat <code>{chatId}</code> · {status}
      </p>
      {messages.map((m) => (
        <div key={m.id} className="message" data-role={m.role}>
          <b>{m.role}</b>
          {m.parts.map((part, i) => (
            // biome-ignore lint/suspicious/noArrayIndexKey: parts have no ids, and a message only appends them
            <Part key={`${m.id}-${i}`} part={part} />
          ))}
        </div>
      ))}
      {error && <p className="error">{error.message}</p>}
      <form onSubmit={send}>
        <input id="input" value={input} onChange={(e) => setInput(e.target.value)} placeholder="Ask something" />
        <button id="send" type="submit" disabled={busy}>
          Send
        </button>
        <button id="stop" type="button" onClick={stopTurn} disabled={!busy}>
          Stop
        </button>
      </form>
    </main>
  );
}

function Part({ part }: { part: UIMessage["parts"][number] }) {
  if (part.type === "text") return <span>{part.text}</span>;
  if (part.type === "file") {
    const name = part.filename ?? part.mediaType;
    return part.mediaType.startsWith("image/") ? (
      <img src={part.url} alt={name} style={{ maxWidth: "100%" }} />
    ) : (
      <a href={part.url} target="_blank" rel="noreferrer">
        {name}
      </a>
    );
  }
  if (part.type === "dynamic-tool" || part.type.startsWith("tool-")) {
    const tool = part as { type: string; toolName?: string; state: string; input?: unknown; output?: unknown };
    return (
      <div className="tool" data-tool={tool.toolName ?? tool.type.slice(5)}>
        🔧 {tool.toolName ?? tool.type.slice(5)} ({tool.state}) {JSON.stringify(tool.input)}
        {tool.output !== undefined && <> → {JSON.stringify(tool.output)}</>}
      </div>
    );
  }
  return null;
}

createRoot(document.getElementById("root")!).render(<App />);
