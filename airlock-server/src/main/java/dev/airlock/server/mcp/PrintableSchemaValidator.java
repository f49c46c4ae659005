package dev.airlock.server.mcp;

import dev.airlock.core.Printable;
import io.modelcontextprotocol.json.McpJsonDefaults;
import io.modelcontextprotocol.json.schema.JsonSchemaValidator;

import java.util.Map;

/**
 * The SDK's JSON-schema check of tool arguments, whose refusals quote the argument names as sent
 * (control characters, terminal escapes and all). Here a refusal is passed on in printable form
 * only, and cut short, since it goes to a model and into logs.
 */
final class PrintableSchemaValidator implements JsonSchemaValidator {

    /** The longest refusal passed on: enough for several field errors. */
    static final int MAX_MESSAGE = 1000;

    private final JsonSchemaValidator sdk;

    PrintableSchemaValidator(JsonSchemaValidator sdk) {
        this.sdk = sdk;
    }

    PrintableSchemaValidator() {
        this(McpJsonDefaults.getSchemaValidator());
    }

    @Override
    public ValidationResponse validate(Map<String, Object> schema, Object arguments) {
        ValidationResponse r = sdk.validate(schema, arguments);
        return r.valid() ? r : ValidationResponse.asInvalid(Printable.of(r.errorMessage(), MAX_MESSAGE));
    }

    @Override
    public ValidationResponse validateSchema(Map<String, Object> schema) {
        return sdk.validateSchema(schema);
    }
}
