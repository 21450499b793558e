// Milliseconds to and from google.protobuf.Duration.
export interface DurationInit {
  seconds: bigint;
  nanos: number;
}

export function toDuration(ms: number): DurationInit {
  const whole = Math.floor(ms / 1000);
  return { seconds: BigInt(whole), nanos: Math.round((ms - whole * 1000) * 1e6) };
}

export function toMs(d: DurationInit): number {
  return Number(d.seconds) * 1000 + d.nanos / 1e6;
}
