// Every language's conformance client authenticating with a bearer JWT over TLS (test/conformance/auth-suite.ts).
import { authenticationSuite } from "./auth-suite.js";

authenticationSuite("a bearer JWT over TLS");
