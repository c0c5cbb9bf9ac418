/**
 * Loopback HTTP servers standing in for AWS endpoints in unit tests of the clients:
 * count requests, answer each with `answer` (or never), and close with the clients
 * pointed at them (`closeFakeServers` in an `afterEach`).
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { AwsClients } from '../../core/aws/clients.ts';

export interface FakeServer {
  readonly url: string;
  /** Requests received so far. */
  requests(): number;
  /** Registers clients to destroy with the server; returns them. */
  track(clients: AwsClients): AwsClients;
}

const opened: { server: Server; clients?: AwsClients }[] = [];

/** A server on loopback that counts requests and answers each one with `answer` (or never). */
export async function startFakeServer(answer?: (req: IncomingMessage, res: ServerResponse) => void): Promise<FakeServer> {
  let count = 0;
  const server = createServer((req, res) => {
    count++;
    req.resume();
    answer?.(req, res);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const entry: { server: Server; clients?: AwsClients } = { server };
  opened.push(entry);
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests: () => count,
    track: (c) => {
      entry.clients = c;
      return c;
    },
  };
}

/** Destroys the tracked clients and closes every server started since the last call. */
export function closeFakeServers(): void {
  for (const { server, clients } of opened.splice(0)) {
    clients?.destroy();
    server.closeAllConnections();
    server.close();
  }
}
