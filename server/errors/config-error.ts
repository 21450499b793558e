// A setting that cannot be taken (a flag, a file it names, a policy): the server does not start, and says
// which one and why. Thrown by config.ts and by what reads the files a setting names (auth/).
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ConfigError";
  }
}
