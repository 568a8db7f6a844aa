package io.github.airflowprovidereos.writer;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.Serializable;
import java.lang.reflect.InvocationTargetException;

/**
 * The write plan's {@code observer} entry: which {@link TaskObserver} the tasks create, and its configuration.
 *
 * <p>Kept as a class name and a JSON string, not an instance: the plan is parsed on the driver,
 * whose class path need not hold the plug-in's jar; each task creates its observer from its own
 * class loader, which holds the jars the driver added for the executors.
 */
final class TaskObserverPlan implements Serializable {
    private static final long serialVersionUID = 1L;
    private static final TaskObserverPlan NONE = new TaskObserverPlan(null, null);

    private final String className;
    private final String config;

    private TaskObserverPlan(String className, String config) {
        this.className = className;
        this.config = config;
    }

    /** The plan's {@code observer} entry ({@code {"class": ..., "config": {...}}}); null: none. */
    static TaskObserverPlan parse(JsonNode node) {
        if (node == null || node.isNull()) {
            return NONE;
        }
        JsonNode name = node.get("class");
        if (name == null || !name.isTextual()) {
            throw new IllegalArgumentException("the write plan's observer names no class: " + node);
        }
        JsonNode config = node.get("config");
        return new TaskObserverPlan(name.asText(), config == null ? "null" : config.toString());
    }

    /** Whether a plug-in observes the tasks. */
    boolean observed() {
        return className != null;
    }

    /** The observer for this task, from the task's class loader. */
    TaskObserver create() {
        if (className == null) {
            return TaskObserver.NONE;
        }
        ClassLoader loader = Thread.currentThread().getContextClassLoader();
        try {
            Class<? extends TaskObserver> type =
                    Class.forName(className, true, loader).asSubclass(TaskObserver.class);
            return type.getConstructor(String.class).newInstance(config);
        } catch (ClassNotFoundException e) {
            throw new IllegalStateException("the write plan's task observer " + className + " is not on the "
                    + "executor's class path: the plug-in that named it must add its jar (SparkContext.addJar)", e);
        } catch (NoSuchMethodException | InstantiationException | IllegalAccessException
                 | InvocationTargetException | ClassCastException e) {
            throw new IllegalStateException("cannot create the task observer " + className
                    + " (a TaskObserver with a public constructor taking its JSON configuration)", e);
        }
    }
}
