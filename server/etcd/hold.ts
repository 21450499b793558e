// A hold keeps the transactions of one request (a Batch of many writes) out of etcd until every write
// of the request has queued its transaction or given up before queueing one. Without it, the first
// write to reach the committer would go out alone at once, and the rest, prepared a few microtasks
// later, would follow in requests of their own; held, they go out packed together, one etcd request
// for many writes. A hold never waits on anything but its own members' preparation (token checks).

/** One member of a hold: says once that its transaction is queued, or that it will queue none. */
export interface HoldMember {
  readonly hold: Hold;
  arrived(): void;
}

export class Hold {
  private waiting: number;
  private readonly listeners: (() => void)[] = [];

  constructor(members: number) {
    this.waiting = members;
  }

  /** True once every member has arrived. */
  get open(): boolean {
    return this.waiting <= 0;
  }

  /** One handle per member; arrived() on a handle counts once however often it is called. */
  member(): HoldMember {
    let done = false;
    return {
      hold: this,
      arrived: () => {
        if (done) return;
        done = true;
        if (--this.waiting === 0) for (const l of this.listeners.splice(0)) l();
      },
    };
  }

  /** Runs l when the hold opens (at once if it is open), once however often it is given. */
  onOpen(l: () => void): void {
    if (this.open) l();
    else if (!this.listeners.includes(l)) this.listeners.push(l);
  }
}
