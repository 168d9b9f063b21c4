// Large point sets drawn by compute (render_splat.c): a thread a sphere visits the pixels of the
// screen rectangle around its outline (the bound of sphere_point.vert.glsl), casts each pixel's
// ray at the sphere as sphere.frag.glsl does, and keeps the nearest depth a pixel with an atomic
// minimum (u_pass 0). u_pass 1 writes the sphere's index + 1 where its depth is that minimum: a
// visibility buffer that splat.frag.glsl shades. Depths are window depths in [0, 1]; as
// non-negative floats their bits order as the values do.
layout(local_size_x = 128) in;

layout(std430, binding = 0) readonly buffer Spheres {
  vec4 u_sphere[]; // world centre, radius: every point set, one after another
};
layout(r32ui, binding = 0) coherent uniform uimage2D u_depth;
layout(r32ui, binding = 1) uniform uimage2D u_id;

uniform mat4 u_view;
uniform mat4 u_proj; // a symmetric perspective
uniform ivec2 u_size;
uniform uint u_first; // the set's first sphere in u_sphere
uniform uint u_count;
uniform int u_pass;

void main() {
  uint k = gl_GlobalInvocationID.x;
  if (k >= u_count) return;
  vec4 s = u_sphere[u_first + k];
  vec3 c = (u_view * vec4(s.xyz, 1.0)).xyz;
  float r = s.w;
  if (!(r > 0.0) || !(c.z + r < 0.0)) return; // behind the eye or around it
  vec2 sx = clamp(wf_sphere_slopes(c.x, c.z, r) * u_proj[0][0], -2.0, 2.0);
  vec2 sy = clamp(wf_sphere_slopes(c.y, c.z, r) * u_proj[1][1], -2.0, 2.0);
  vec2 size = vec2(u_size);
  // the pixels whose centres (i + 0.5) / size * 2 - 1 fall within [lo, hi] in NDC
  ivec2 lo = max(ivec2(floor((vec2(sx.x, sy.x) + 1.0) * 0.5 * size - 0.5)), ivec2(0));
  ivec2 hi = min(ivec2(ceil((vec2(sx.y, sy.y) + 1.0) * 0.5 * size - 0.5)), u_size - 1);
  float cc = dot(c, c) - r * r;
  for (int y = lo.y; y <= hi.y; y++)
    for (int x = lo.x; x <= hi.x; x++) {
      vec2 ndc = (vec2(x, y) + 0.5) / size * 2.0 - 1.0;
      vec3 dir = normalize(vec3(ndc.x / u_proj[0][0], ndc.y / u_proj[1][1], -1.0));
      float b = dot(dir, c);
      float h = b * b - cc;
      if (h < 0.0) continue;
      vec3 hit = dir * (b - sqrt(h));
      vec4 clip = u_proj * vec4(hit, 1.0);
      float z = clip.z / clip.w * 0.5 + 0.5;
      if (!(z >= 0.0 && z <= 1.0)) continue; // outside the near and far planes
      uint d = floatBitsToUint(z);
      ivec2 p = ivec2(x, y);
      if (u_pass == 0) {
        if (imageLoad(u_depth, p).x > d) // deep in a pile most spheres are already beaten
          imageAtomicMin(u_depth, p, d);
      }
      else if (imageLoad(u_depth, p).x == d)
        imageStore(u_id, p, uvec4(u_first + k + 1u));
    }
}
