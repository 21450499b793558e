package io.fencekeeper.client;

import com.sun.net.httpserver.Filter;
import com.sun.net.httpserver.HttpExchange;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.function.Function;

/**
 * FencedEndpoint as a filter of the JDK's own HTTP server (com.sun.net.httpserver), which needs no
 * library: HttpContext.getFilters().add(new FencedHttpFilter(endpoint, resourceOf)). resourceOf names the
 * resource an exchange writes, or null for one that is not fenced. A refusal is answered here as JSON
 * (code, reason, message, resource, generation, fence); an admitted exchange reaches the handler with the
 * token in the attribute TOKEN_ATTRIBUTE, holding the resource's turn until the handler returns. (The
 * same three calls, verify, enter and admit, make a servlet Filter.)
 */
public final class FencedHttpFilter extends Filter {
  public static final String TOKEN_ATTRIBUTE = "fencekeeper.token";

  private final FencedEndpoint endpoint;
  private final Function<HttpExchange, String> resourceOf;

  public FencedHttpFilter(FencedEndpoint endpoint, Function<HttpExchange, String> resourceOf) {
    this.endpoint = endpoint;
    this.resourceOf = resourceOf;
  }

  @Override
  public String description() {
    return "refuses writes whose Fencing-Token is forged or stale";
  }

  @Override
  public void doFilter(HttpExchange exchange, Chain chain) throws IOException {
    String resource = resourceOf.apply(exchange);
    if (resource == null) {
      chain.doFilter(exchange);
      return;
    }
    List<String> values = exchange.getRequestHeaders().get(FencedEndpoint.HEADER);
    FencedEndpoint.Checked checked = endpoint.verify(values == null ? null : String.join(", ", values), resource);
    if (checked.refusal() != null) {
      refuse(exchange, checked.refusal());
      return;
    }
    try (AutoCloseable turn = endpoint.enter(resource)) {
      FencedEndpoint.Refusal refusal = endpoint.admit(checked.token());
      if (refusal != null) {
        refuse(exchange, refusal);
        return;
      }
      exchange.setAttribute(TOKEN_ATTRIBUTE, checked.token());
      chain.doFilter(exchange);
    } catch (IOException | RuntimeException e) {
      throw e;
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  private static void refuse(HttpExchange exchange, FencedEndpoint.Refusal r) throws IOException {
    StringBuilder json = new StringBuilder("{\"code\":").append(quote(codeName(r.code))).append(",\"message\":").append(quote(r.message));
    if (r.reason != null) json.append(",\"reason\":").append(quote(r.reason));
    if (r.resource != null) json.append(",\"resource\":").append(quote(r.resource));
    if (r.generation != 0) json.append(",\"generation\":").append(quote(Long.toString(r.generation)));
    if (r.fence != 0) json.append(",\"fence\":").append(quote(Long.toString(r.fence)));
    byte[] body = json.append('}').toString().getBytes(StandardCharsets.UTF_8);
    exchange.getResponseHeaders().set("Content-Type", "application/json");
    if (r.httpStatus == 503) exchange.getResponseHeaders().set("Retry-After", "1");
    exchange.sendResponseHeaders(r.httpStatus, body.length);
    exchange.getResponseBody().write(body);
    exchange.close();
  }

  /** The code as connect and the other SDKs' endpoints spell it ("FailedPrecondition"). */
  private static String codeName(io.grpc.Status.Code code) {
    StringBuilder out = new StringBuilder();
    for (String part : code.name().toLowerCase().split("_")) out.append(Character.toUpperCase(part.charAt(0))).append(part.substring(1));
    return out.toString();
  }

  private static String quote(String s) {
    StringBuilder out = new StringBuilder("\"");
    for (char c : s.toCharArray()) {
      if (c == '"' || c == '\\') out.append('\\').append(c);
      else if (c < 0x20) out.append(String.format("\\u%04x", (int) c));
      else out.append(c);
    }
    return out.append('"').toString();
  }
}
