package io.fencepost.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import com.typesafe.config.ConfigObject;
import com.typesafe.config.ConfigValue;
import com.typesafe.config.ConfigValueType;
import org.junit.jupiter.api.Test;

/** Every {@code fencepost.*} key of every module's reference.conf is documented in docs/configuration.md. */
class ConfigurationDocsTest {

  private static Path repoFile(String relative) {
    return RepoFiles.of(relative);
  }

  private static void collect(String prefix, ConfigObject object, List<String> out) {
    for (Map.Entry<String, ConfigValue> e : object.entrySet()) {
      String key = prefix + "." + e.getKey();
      ConfigValue v = e.getValue();
      boolean passThrough = key.endsWith(".kafka-clients") || key.endsWith(".partition-actor")
          && key.startsWith("fencepost.pipeline.") || key.equals("fencepost.pipelines");
      if (v.valueType() == ConfigValueType.OBJECT && !passThrough) {
        collect(key, (ConfigObject) v, out);
      } else {
        out.add(key);
      }
    }
  }

  @Test
  void everyReferenceKeyIsInTheConfigurationReference() throws Exception {
    Config reference = ConfigFactory.defaultReference();
    List<String> keys = new ArrayList<>();
    collect("fencepost", reference.getObject("fencepost"), keys);
    assertTrue(keys.size() >= 25, "found the keys of core and kafka: " + keys);
    String doc = Files.readString(repoFile("docs/configuration.md"));
    TreeSet<String> missing = new TreeSet<>();
    for (String key : keys) {
      if (!doc.contains("`" + key + "`")) {
        missing.add(key);
      }
    }
    assertEquals(new TreeSet<String>(), missing, "keys missing from docs/configuration.md");
  }
}
