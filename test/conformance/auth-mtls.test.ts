// Every language's conformance client authenticating with mutual TLS (test/conformance/auth-suite.ts).
import { authenticationSuite } from "./auth-suite.js";

authenticationSuite("mutual TLS");
