package io.fencekeeper.probe;

import io.fencekeeper.client.FencekeeperClient;
import java.lang.reflect.Constructor;
import java.lang.reflect.Executable;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.RecordComponent;
import java.lang.reflect.Type;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;

/**
 * The library's public API as a user's program sees it: every public or protected member of every public
 * class in its jar whose signature names a generated protobuf class (io.fencekeeper.v1), but the
 * deprecated overloads kept for compatibility. The library converts at its boundary, so this is empty.
 */
final class PublicApi {
  private static final String GENERATED = "io.fencekeeper.v1.";

  private PublicApi() {}

  static List<String> generatedTypesExposed() throws Exception {
    List<String> out = new ArrayList<>();
    Path jar = Path.of(FencekeeperClient.class.getProtectionDomain().getCodeSource().getLocation().toURI());
    List<String> names = new ArrayList<>();
    if (jar.toString().endsWith(".jar")) {
      try (JarFile f = new JarFile(jar.toFile())) {
        for (JarEntry e : Collections.list(f.entries())) {
          if (e.getName().startsWith("io/fencekeeper/client/") && e.getName().endsWith(".class")) names.add(e.getName().replace('/', '.').replaceFirst("\\.class$", ""));
        }
      }
    }
    if (names.isEmpty()) throw new IllegalStateException("no classes of io.fencekeeper.client found in " + jar);
    for (String name : names) {
      Class<?> c = Class.forName(name, false, PublicApi.class.getClassLoader());
      if (!visible(c)) continue;
      if (c.getGenericSuperclass() != null && names(c.getGenericSuperclass())) out.add(c.getName() + " extends " + c.getGenericSuperclass().getTypeName());
      for (Type i : c.getGenericInterfaces()) if (names(i)) out.add(c.getName() + " implements " + i.getTypeName());
      if (c.isRecord()) for (RecordComponent r : c.getRecordComponents()) if (names(r.getGenericType())) out.add(c.getName() + "." + r.getName() + ": " + r.getGenericType().getTypeName());
      for (Field f : c.getDeclaredFields()) {
        if (member(f.getModifiers()) && !f.isAnnotationPresent(Deprecated.class) && names(f.getGenericType())) out.add(c.getName() + "." + f.getName() + ": " + f.getGenericType().getTypeName());
      }
      List<Executable> executables = new ArrayList<>(List.of(c.getDeclaredMethods()));
      executables.addAll(List.<Constructor<?>>of(c.getDeclaredConstructors()));
      for (Executable m : executables) {
        if (!member(m.getModifiers()) || m.isAnnotationPresent(Deprecated.class) || m.isSynthetic()) continue;
        boolean exposes = m instanceof Method method && names(method.getGenericReturnType());
        for (Type p : m.getGenericParameterTypes()) exposes |= names(p);
        if (exposes) out.add(m.toGenericString());
      }
    }
    Collections.sort(out);
    return out;
  }

  private static boolean visible(Class<?> c) {
    for (Class<?> x = c; x != null; x = x.getDeclaringClass()) if (!Modifier.isPublic(x.getModifiers())) return false;
    return true;
  }

  private static boolean member(int modifiers) {
    return Modifier.isPublic(modifiers) || Modifier.isProtected(modifiers);
  }

  private static boolean names(Type t) {
    return t.getTypeName().contains(GENERATED);
  }
}
