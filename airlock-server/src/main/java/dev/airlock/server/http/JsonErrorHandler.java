package dev.airlock.server.http;

import dev.airlock.server.wire.Json;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.server.handler.ErrorHandler;
import org.eclipse.jetty.util.Callback;

import java.nio.ByteBuffer;

/**
 * Errors that Jetty itself raises (a malformed URI, a bad header) in the API's JSON shape instead
 * of an HTML page, so that clients parse one error format.
 */
public final class JsonErrorHandler extends ErrorHandler {

    @Override
    public boolean handle(Request request, Response response, Callback callback) {
        Object statusAttr = request.getAttribute(ERROR_STATUS);
        int status = statusAttr instanceof Integer i ? i : response.getStatus();
        Object messageAttr = request.getAttribute(ERROR_MESSAGE);
        String message = messageAttr == null ? "request refused by the HTTP server" : Json.printable(messageAttr.toString());
        String code = status == 404 ? "not_found" : status == 413 ? "too_large" : status >= 500 ? "internal" : "invalid_argument";
        response.setStatus(status);
        response.getHeaders().put(HttpHeader.CONTENT_TYPE, "application/json");
        response.write(true, ByteBuffer.wrap(JsonViews.error(code, message)), callback);
        return true;
    }
}
