// Every language's conformance client authenticating with a bearer JWT on cleartext loopback (test/conformance/auth-suite.ts).
import { authenticationSuite } from "./auth-suite.js";

authenticationSuite("a bearer JWT on cleartext loopback");
