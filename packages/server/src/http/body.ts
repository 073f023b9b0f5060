import type { IncomingMessage } from 'node:http';
import { LIMITS } from '@realtime/protocol';
import { ApiError } from './api-error.js';

const TOO_LARGE = `the body is over ${LIMITS.bodyBytes} bytes`;

/** Reads the whole body, refusing one over the limit before holding it (Content-Length first, then counting). */
export function readBody(req: IncomingMessage, limit: number = LIMITS.bodyBytes): Promise<Buffer> {
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > limit) {
    return Promise.reject(new ApiError('too_large', TOO_LARGE, { Connection: 'close' }));
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const finish = (error?: ApiError) => {
      if (done) return;
      done = true;
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      if (error) reject(error);
      else resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size));
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        chunks.length = 0;
        finish(new ApiError('too_large', TOO_LARGE, { Connection: 'close' }));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => finish();
    const onError = () => finish(new ApiError('bad_request', 'the request body was cut off'));
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
  });
}
