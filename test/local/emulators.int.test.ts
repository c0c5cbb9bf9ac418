import { once } from 'node:events';
import { createServer, type AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { resolvePort, startDynamoDbLocal } from '../../local/emulators.ts';

async function occupyPort(): Promise<{ port: number; close: () => Promise<void> }> {
  const server = createServer();
  server.listen(0, '0.0.0.0');
  await once(server, 'listening');
  return { port: (server.address() as AddressInfo).port, close: () => new Promise((r) => server.close(() => r())) };
}

describe('resolvePort', () => {
  it('keeps a free preferred port, and falls back to another free port when it is busy', async () => {
    // Prepare
    const busy = await occupyPort();
    const free = await resolvePort(0);

    // Act
    const kept = await resolvePort({ preferred: free.port });
    const moved = await resolvePort({ preferred: busy.port });
    const explicit = await resolvePort(busy.port);
    await busy.close();

    // Assess
    expect(kept).toEqual({ port: free.port, fellBack: false });
    expect(moved.fellBack).toBe(true);
    expect(moved.port).not.toBe(busy.port);
    expect(explicit).toEqual({ port: busy.port, fellBack: false });
  });
});

describe('startDynamoDbLocal', () => {
  it('fails fast, naming the port, when its port is taken', async () => {
    // Prepare
    const busy = await occupyPort();

    // Act
    const started = startDynamoDbLocal({ port: busy.port, region: 'us-east-1', startTimeoutMs: 20_000 });

    // Assess
    await expect(started).rejects.toThrow(`port ${busy.port} is already in use`);
    await busy.close();
  });
});
